# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""ctest's entry (python/CMakeLists.txt): runs python/tests against the build
tree's package; 77 (skipped) without pytest or numpy. Tests that need torch
or a GPU report themselves skipped."""
import os
import sys

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
sys.exit(pytest.main([here, "-q", "-rs", "-p", "no:cacheprovider", *sys.argv[1:]]))
