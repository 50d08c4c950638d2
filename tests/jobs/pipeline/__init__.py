"""Tests of jobs/pipeline/ (the pipeline parts)."""
