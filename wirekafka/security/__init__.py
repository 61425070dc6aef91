"""Sans-IO security: principals, SASL mechanisms, credentials and the ACL authorizer."""
