import { randomBytes } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import { Provider, interactionPolicy } from "oidc-provider";
import { createMemoryAdapter } from "oidc-provider/lib/adapters/memory_adapter.js";
import { handleInteraction } from "./interactions.ts";
import { DEMO_USERS, type DevUser } from "./users.ts";

export interface DevIdentityProviderOptions {
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** Issuer URL as browsers reach it; default `http://127.0.0.1:<port>`. */
  issuerBaseUrl?: string;
  clientId: string;
  clientSecret: string;
  /** The application's callback URL(s), e.g. http://localhost:3000/api/auth/callback. */
  redirectUri: string | string[];
  /** Demo users to offer; default DEMO_USERS (viewer, editor, admin of the demo workspace). */
  users?: readonly DevUser[];
}

/** A running development identity provider. */
export interface DevIdentityProvider {
  /** Set OIDC_ISSUER to this. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  port: number;
  users: readonly DevUser[];
  /** Stops listening and drops open connections. */
  stop(): Promise<void>;
}

/** The OIDC_* variables that point the service at a development identity provider (its first redirect URI). */
export function devIdpEnv(idp: Pick<DevIdentityProvider, "issuer" | "clientId" | "clientSecret" | "redirectUris">) {
  return {
    OIDC_ISSUER: idp.issuer,
    OIDC_CLIENT_ID: idp.clientId,
    OIDC_CLIENT_SECRET: idp.clientSecret,
    OIDC_REDIRECT_URI: idp.redirectUris[0] as string,
  };
}

/**
 * Runs oidc-provider in process on its own port, with one confidential client (authorization code
 * + PKCE), the given users, a `groups` claim in the ID token, and a pick-a-user sign-in page.
 * Development only: there are no passwords. Callers must never start it in production.
 */
export async function startDevIdentityProvider(opts: DevIdentityProviderOptions): Promise<DevIdentityProvider> {
  if (process.env.NODE_ENV === "production") throw new Error("the development identity provider must not run in production");
  const users = opts.users ?? DEMO_USERS;
  const redirectUris = Array.isArray(opts.redirectUri) ? opts.redirectUri : [opts.redirectUri];
  const host = opts.host ?? "127.0.0.1";

  // Listen first: the issuer URL includes the port, and the provider needs the issuer.
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.writeHead(503).end();
  };
  const server: Server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const issuer = (opts.issuerBaseUrl ?? `http://${host.includes(":") ? `[${host}]` : host}:${port}`).replace(/\/$/, "");

  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: `dev-${randomBytes(4).toString("hex")}`, alg: "RS256", use: "sig" };

  // Always show the user picker, even with a live provider session, so switching demo users is one click.
  const policy = interactionPolicy.base();
  policy
    .get("login")!
    .checks.push(
      new interactionPolicy.Check("pick_user", "the development provider asks which demo user on every sign-in", "login_required", (ctx) =>
        ctx.oidc.result?.login ? interactionPolicy.Check.NO_NEED_TO_PROMPT : interactionPolicy.Check.REQUEST_PROMPT,
      ),
    );

  const provider = new Provider(issuer, {
    adapter: createMemoryAdapter(),
    clients: [
      {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        redirect_uris: redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString("base64url")] },
    pkce: { required: () => true },
    claims: {
      // `groups` rides on the openid scope so the default OIDC_SCOPE ("openid profile email") carries it.
      openid: ["sub", "groups"],
      profile: ["name", "preferred_username"],
      email: ["email", "email_verified"],
    },
    // Scope-granted claims go into the ID token too, which is all the application reads.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { policy, url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    clientBasedCORS: () => false,
    ttl: { AccessToken: 600, AuthorizationCode: 120, IdToken: 600, Interaction: 900, Session: 3600, Grant: 3600 },
    async findAccount(_ctx: unknown, id: string) {
      const user = users.find((u) => u.id === id);
      if (!user) return undefined;
      return {
        accountId: user.id,
        async claims() {
          return {
            sub: user.id,
            name: user.name,
            preferred_username: user.id,
            email: user.email,
            email_verified: true,
            groups: [...user.groups],
          };
        },
      };
    },
  });
  const callback = provider.callback();
  handler = (req, res) => {
    handleInteraction(provider, users, req, res)
      .then((handled) => {
        if (!handled) callback(req, res);
      })
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  };

  let stopped: Promise<void> | undefined;
  return {
    issuer,
    clientId: opts.clientId,
    clientSecret: opts.clientSecret,
    redirectUris,
    port,
    users,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}
