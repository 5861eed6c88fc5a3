/**
 * @module front/oauth/metadata
 * The discovery documents: the authorization server's metadata (RFC 8414) and the
 * MCP resource's (RFC 9728), both public and cacheable.
 */
import type { OAuthMetadata, OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js'

export function authorizationServerMetadata(issuer: string, registration: boolean): OAuthMetadata {
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    ...(registration ? { registration_endpoint: `${issuer}/register` } : {}),
    revocation_endpoint: `${issuer}/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    authorization_response_iss_parameter_supported: true,
  }
}

/** The metadata of `resource` (the MCP server, at the address the client asked about). */
export function protectedResourceMetadata(issuer: string, resource: string): OAuthProtectedResourceMetadata {
  return {
    resource,
    authorization_servers: [issuer],
    bearer_methods_supported: ['header'],
    resource_name: 'filegate MCP server',
  }
}
