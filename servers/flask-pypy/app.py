"""The WSGI application gunicorn serves: the shared Flask app, under this stack's name."""

from serverlab_contract.flask_app import application_from_env

# The display name goes into the hello body; it must match server.toml.
application = application_from_env("Flask + gevent (PyPy)")
