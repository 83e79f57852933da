"""The WSGI application mod_wsgi serves: the shared one, under this stack's name."""

from serverlab_contract.wsgi import application_from_env

# Apache writes the Date header of every response, so the application adds none.
application = application_from_env("mod_wsgi", add_date=False)
