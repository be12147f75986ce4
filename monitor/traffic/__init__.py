"""Real traffic: the deployed application's own model calls, received as OpenTelemetry GenAI spans.

``spans`` reads OTLP exports, ``routes`` maps calls to plan tasks, ``ingest`` stores them
(priced and redacted), ``streams`` rolls them up hourly and feeds each task's traffic streams,
``judging`` sends a sample of real exchanges to the jury, ``retention`` deletes expired rows and
``files`` imports exports saved to disk.
"""
