"""The package's logger, "LLM_DATADIST" (Python's logging), at HIXL's module
path llm_datadist.utils.log. Its level comes from ASCEND_GLOBAL_LOG_LEVEL
(0 debug, 1 info, 2 warning, 3 error; default error), as in LLM-DataDist;
records name the caller outside this module. The C++ layer logs on its own
(HIXL_LOG_LEVEL, docs/kv.md)."""

import logging
import os
import sys
import threading

__all__ = ["get_logger", "debug", "info", "warn", "warning", "error"]

_LEVELS = {"0": logging.DEBUG, "1": logging.INFO, "2": logging.WARNING, "3": logging.ERROR}
_FORMAT = "[%(levelname)s] %(name)s(%(process)d,%(processName)s):%(asctime)s.%(msecs)03d [%(filename)s:%(lineno)d]" \
          "%(thread)d %(funcName)s: %(message)s"
_lock = threading.Lock()
_logger = None


def get_logger() -> logging.Logger:
    global _logger
    with _lock:
        if _logger is None:
            logger = logging.getLogger("LLM_DATADIST")
            logger.setLevel(_LEVELS.get(os.getenv("ASCEND_GLOBAL_LOG_LEVEL", ""), logging.ERROR))
            if not logger.handlers:
                handler = logging.StreamHandler(sys.stdout)
                handler.setFormatter(logging.Formatter(_FORMAT, datefmt="%Y-%m-%d %H:%M:%S"))
                logger.addHandler(handler)
            _logger = logger
        return _logger


# stacklevel 2: the record names whoever called debug/info/...
def debug(msg, *args, **kwargs):
    get_logger().debug(msg, *args, stacklevel=2, **kwargs)


def info(msg, *args, **kwargs):
    get_logger().info(msg, *args, stacklevel=2, **kwargs)


def warning(msg, *args, **kwargs):
    get_logger().warning(msg, *args, stacklevel=2, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    get_logger().error(msg, *args, stacklevel=2, **kwargs)
