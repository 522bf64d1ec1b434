// What the relying party uses of openid-client, loaded on the first sign-in through lib/oidc/sdk.ts.
// Named re-exports keep the package tree-shakeable behind the dynamic import.
export {
  AuthorizationResponseError,
  ClientError,
  ClientSecretBasic,
  None,
  ResponseBodyError,
  allowInsecureRequests,
  authorizationCodeGrant,
  buildAuthorizationUrl,
  calculatePKCECodeChallenge,
  customFetch,
  discovery,
  fetchUserInfo,
  randomNonce,
  randomPKCECodeVerifier,
  randomState,
} from "openid-client";
