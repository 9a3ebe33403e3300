#!/bin/sh
# A script that dies half way through its report.
echo '{"schema": "gpunode.dev/frameworks/v1", "tests": [{"name": "allo'
