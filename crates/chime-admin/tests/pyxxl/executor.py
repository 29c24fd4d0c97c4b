"""A real third-party XXL-JOB executor (pyxxl 0.4.8 from PyPI) for Chime's end-to-end tests.

usage: executor.py ADMIN_API_BASE APP_NAME TOKEN PORT LOG_DIR
ADMIN_API_BASE is what pyxxl calls `xxl_admin_baseurl`, e.g. http://127.0.0.1:8080/xxl-job-admin/api/
"""

import asyncio
import sys

from pyxxl import ExecutorConfig, PyxxlRunner
from pyxxl.ctx import g

admin, app_name, token, port, log_dir = sys.argv[1:6]

config = ExecutorConfig(
    xxl_admin_baseurl=admin,
    executor_app_name=app_name,
    access_token=token,
    executor_listen_host="127.0.0.1",
    executor_listen_port=int(port),
    executor_url=f"http://127.0.0.1:{port}",
    log_local_dir=log_dir,
    executor_log_path=f"{log_dir}/pyxxl.log",
)
app = PyxxlRunner(config)


@app.register(name="echoJob")
async def echo_job():
    param = g.xxl_run_data.executorParams
    g.logger.info("echoJob param=%s", param)
    g.logger.info("echoJob shard %s/%s", g.xxl_run_data.broadcastIndex, g.xxl_run_data.broadcastTotal)
    return f"echo:{param}"


# The names of Chime's demo handlers, so pyxxl can share a group with Chime's demo executor.
@app.register(name="demoJobHandler")
async def demo_job():
    param = g.xxl_run_data.executorParams
    g.logger.info("XXL-JOB, Hello World. param=%s", param)
    return param


@app.register(name="shardingJobHandler")
async def sharding_job():
    index, total = g.xxl_run_data.broadcastIndex, g.xxl_run_data.broadcastTotal
    g.logger.info("shard index = %s, shard total = %s", index, total)
    return f"shard {index}/{total}"


@app.register(name="failJob")
async def fail_job():
    raise RuntimeError(g.xxl_run_data.executorParams or "boom")


@app.register(name="slowJob")
async def slow_job():
    await asyncio.sleep(float(g.xxl_run_data.executorParams or "30"))
    return "slept"


app.run_executor()
