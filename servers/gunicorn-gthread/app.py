"""The WSGI application gunicorn serves: the shared one, under this stack's name."""

from serverlab_contract.wsgi import application_from_env

# gunicorn writes its own Date header, so the application adds none.
application = application_from_env("gunicorn (gthread)", add_date=False)
