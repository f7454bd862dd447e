"""The pure sync: request and facts in, children and status out. Validation, the effective
settings of each track, traffic policy, the template contract (view), the desired children,
status and conditions, and keeping children as last applied. No I/O, no clock."""
