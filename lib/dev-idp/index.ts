export { DEMO_USERS, DEMO_WORKSPACE_GROUPS, type DevUser } from "./users.ts";
export { type DevIdentityProvider, type DevIdentityProviderOptions, devIdpEnv, startDevIdentityProvider } from "./provider.ts";
