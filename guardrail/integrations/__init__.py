"""Adapters that put the guardrail inside other tools' request paths.

Each adapter lives in its own module and imports its host library only there, so that
``import guardrail`` never pays for a framework it does not use.
"""
