"""A job that sleeps as long as its config says: a run the launcher tests can cancel or kill
mid-way. Its own module, imported by package path, so a worker process can import it too."""

import time

import dagster as dg


@dg.op(config_schema={"seconds": float})
def sleep_op(context):
    time.sleep(context.op_config["seconds"])


@dg.job(executor_def=dg.in_process_executor)
def sleep_job():
    sleep_op()
