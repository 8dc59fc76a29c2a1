"""The documented example runs as written.

examples/python/quickstart.py is the example; every ```python block of
docs/python.md (and README.md, when it has one) whose first line is
"# examples/python/quickstart.py..." must be an exact copy of it.
"""

import os
import re
import subprocess
import sys

from conftest import REPO, child_env

EXAMPLE = os.path.join(REPO, "examples", "python", "quickstart.py")
DOCS = [os.path.join(REPO, "docs", "python.md"), os.path.join(REPO, "README.md")]
MARKER = "# examples/python/quickstart.py"


def example_blocks(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    return [b for b in blocks if b.startswith(MARKER)]


def test_docs_show_the_example():
    with open(EXAMPLE) as f:
        example = f.read()
    blocks = example_blocks(DOCS[0])
    assert blocks, f"docs/python.md has no python block starting with {MARKER!r}"
    for path in DOCS:
        for block in example_blocks(path):
            assert block == example, f"the example in {os.path.relpath(path, REPO)} differs from {EXAMPLE}"


def test_example_runs():
    result = subprocess.run(
        [sys.executable, EXAMPLE], env=child_env(), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "quickstart OK" in result.stdout
    assert "('done', '4 MiB each way')" in result.stdout
