"""Integrations with tools users already run; each module imports its optional library."""
