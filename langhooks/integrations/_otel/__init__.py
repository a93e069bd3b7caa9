"""How ``langhooks.integrations.opentelemetry`` works, by concern.

``_capture``: which content is recorded where (the capture modes, the
``gen_ai.client.inference.operation.details`` log record); ``_calls``: one model
call's ``chat`` span and metrics; ``_runs``: a chain run's spans, keyed by run id.
Only the public module imports these, after checking OpenTelemetry is installed.
"""
