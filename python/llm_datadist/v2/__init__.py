"""HIXL's module path llm_datadist.v2 (its cache-manager API): llm_types,
llm_datadist and cache_manager name this package's classes."""
