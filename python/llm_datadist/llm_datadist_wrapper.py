"""llm_datadist.llm_datadist_wrapper: in HIXL, the name of its package's
compiled binding. Here it holds only the status codes under that module's
names (kSuccess, kParamInvalid, ...), for code that compares with them; the
binding's functions are HIXL's internals, and this package's own binding is
llm_datadist._llm_datadist."""

from .status import LLMStatusCode as _C

kSuccess = int(_C.LLM_SUCCESS)
kFailed = int(_C.LLM_FAILED)
kParamInvalid = int(_C.LLM_PARAM_INVALID)
kLLMWaitProcessTimeOut = int(_C.LLM_WAIT_PROCESS_TIMEOUT)
kLLMKVCacheNotExist = int(_C.LLM_KV_CACHE_NOT_EXIST)
kLLMRepeatRequest = int(_C.LLM_REPEAT_REQUEST)
kLLMRequestAlreadyCompleted = int(_C.LLM_REQUEST_ALREADY_COMPLETED)
kLLMEngineFinalized = int(_C.LLM_ENGINE_FINALIZED)
kLLMNotYetLink = int(_C.LLM_NOT_YET_LINK)
kAlreadyLink = int(_C.LLM_ALREADY_LINK)
kLinKFailed = int(_C.LLM_LINK_FAILED)  # sic: HIXL's spelling
kUnlinkFailed = int(_C.LLM_UNLINK_FAILED)
kNotifyPromptUnlinkFailed = int(_C.LLM_NOTIFY_PROMPT_UNLINK_FAILED)
kLLMClusterNumExceedLimit = int(_C.LLM_CLUSTER_NUM_EXCEED_LIMIT)
kProcessingLink = int(_C.LLM_PROCESSING_LINK)
kDeviceOutOfMemory = int(_C.LLM_DEVICE_OUT_OF_MEMORY)
kPrefixAlreadyExist = int(_C.LLM_PREFIX_ALREADY_EXIST)
kPrefixNotExist = int(_C.LLM_PREFIX_NOT_EXIST)
kLLMSeqLenOverLimit = int(_C.LLM_SEQ_LENOVERLIMIT)
kLLMNoFreeBlock = int(_C.LLM_NO_FREE_BLOCK)
kLLMBlocksOutOfMemory = int(_C.LLM_BLOCKS_OUT_OF_MEMORY)
kLLMExistLink = int(_C.LLM_EXIST_LINK)
kLLMFeatureNotEnabled = int(_C.LLM_FEATURE_NOT_ENABLED)
kLLMTimeout = int(_C.LLM_TIMEOUT)
kLLMLinkBusy = int(_C.LLM_LINK_BUSY)
kLLMOutOfMemory = int(_C.LLM_OUT_OF_MEMORY)
kLLMDeviceMemError = int(_C.LLM_DEVICE_MEM_ERROR)
kLLMSuspectRemoteError = int(_C.LLM_SUSPECT_REMOTE_ERROR)
