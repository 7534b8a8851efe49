# The Celery app is loaded with Django so that @shared_task binds to it and
# `delay_on_commit` works from web processes as well as workers.
from config.celery import app as celery_app

__all__ = ("celery_app",)
