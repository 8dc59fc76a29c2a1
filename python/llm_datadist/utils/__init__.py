"""HIXL's module path llm_datadist.utils: argument checks (utils) and the
package's logger (log)."""
