"""Tests of jobs/commands/ (the command line)."""
