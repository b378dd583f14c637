# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "torch: needs torch (skipped without it)")
