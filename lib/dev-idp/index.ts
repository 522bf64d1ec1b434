export { DEMO_USERS, DEMO_WORKSPACE_GROUPS, type DevUser } from "./users.ts";
export { type DevIdentityProvider, type DevIdentityProviderOptions, startDevIdentityProvider } from "./provider.ts";
