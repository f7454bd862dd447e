"""The `llmdeploy` command and what it runs besides the server: previewing what a resource
renders, checking a template folder, printing the CRD."""
