"""The WSGI application uWSGI serves: the shared one, under this stack's name."""

from serverlab_contract.wsgi import application_from_env

# uWSGI (its HTTP router included) writes no Date header, so the application
# adds it, formatted at most once a second.
application = application_from_env("uWSGI", add_date=True)
