#!/bin/sh
# The interpreter crashes before it prints a report.
echo "Fatal Python error: Segmentation fault" >&2
exit 139
