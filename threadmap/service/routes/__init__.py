"""The service's HTTP resources, one router each: jobs, work done now (verify, calculator),
and the server itself (schema, health, metrics, the Explorer page)."""
