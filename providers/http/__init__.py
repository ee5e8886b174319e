"""What every HTTP provider shares: the transport, the pooled client, bounded bodies, SSE,
the strict JSON loader, the status/message table, and the vendor base class.
"""
