"""llm_datadist.v2.llm_datadist: HIXL's module path of LLMDataDist, and the
exit handler that finalizes the process's LLMDataDist."""

from ..datadist import LLMDataDist, _shutdown_handler

__all__ = ["LLMDataDist"]
