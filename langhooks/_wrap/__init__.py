"""Wrappers around handlers: background, iteration, notification."""
