/**
 * Test-only helpers: a minimal cookie jar and a scripted browser that signs in through the
 * development identity provider over real HTTP. Nothing in the app imports this file.
 */

/** Cookies by name for one site (paths are ignored: every cookie is sent back). */
export class CookieJar {
  readonly cookies = new Map<string, string>();

  /** Stores the response's Set-Cookie headers; Max-Age=0 or a past Expires deletes. */
  take(res: Response): this {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => {
        const [k, v] = a.split("=").map((x) => x?.trim().toLowerCase());
        return (k === "max-age" && Number(v) <= 0) || (k === "expires" && Date.parse(v ?? "") < Date.now());
      });
      if (expired || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return this;
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

type AppLike = { request(input: string, init?: RequestInit): Response | Promise<Response> };

export interface SignInTrace {
  /** Every URL visited, in order (app paths and identity-provider URLs). */
  visited: string[];
  /** The callback URL the identity provider redirected to. */
  callbackUrl: string;
  /** The app's final response to the callback. */
  callbackResponse: Response;
  appJar: CookieJar;
}

/**
 * Drives the full login like a browser: app /api/auth/login → provider → pick `userId` on the
 * sign-in page → Allow on the consent page → app callback. `app` is driven with app.request(),
 * the provider with real fetch. `beforeCallback` may rewrite the callback URL (tamper tests).
 */
export async function signInThroughDevIdp(opts: {
  app: AppLike;
  appOrigin: string;
  userId: string;
  appJar?: CookieJar;
  /** The browser's cookies at the provider; pass the same jar to sign in again in one "browser". */
  idpJar?: CookieJar;
  /** Passed to /api/auth/login as `returnTo`. */
  returnTo?: string;
  consent?: "allow" | "cancel";
  beforeCallback?: (url: URL) => URL;
}): Promise<SignInTrace> {
  const appJar = opts.appJar ?? new CookieJar();
  const idpJar = opts.idpJar ?? new CookieJar();
  const visited: string[] = [];

  const query = opts.returnTo === undefined ? "" : `?returnTo=${encodeURIComponent(opts.returnTo)}`;
  const login = await opts.app.request(`${opts.appOrigin}/api/auth/login${query}`, { headers: { cookie: appJar.header() } });
  appJar.take(login);
  visited.push("/api/auth/login");
  if (login.status !== 302) throw new Error(`login answered ${login.status}: ${await login.text()}`);
  let next = new URL(login.headers.get("location")!);

  for (let hops = 0; hops < 20; hops++) {
    if (next.origin === opts.appOrigin) {
      const callbackUrl = opts.beforeCallback ? opts.beforeCallback(next) : next;
      visited.push(callbackUrl.pathname);
      const callbackResponse = await opts.app.request(callbackUrl.href, { headers: { cookie: appJar.header() } });
      appJar.take(callbackResponse);
      return { visited, callbackUrl: callbackUrl.href, callbackResponse, appJar };
    }
    visited.push(next.href);
    const res = await fetch(next, { redirect: "manual", headers: { cookie: idpJar.header() } });
    idpJar.take(res);
    if (res.status === 302 || res.status === 303) {
      next = new URL(res.headers.get("location")!, next);
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`identity provider answered ${res.status} at ${next.pathname}: ${html.slice(0, 300)}`);
    // Submit the page's form the way a user would.
    let action: string;
    let body: URLSearchParams;
    if (html.includes('name="user"')) {
      action = /action="([^"]*\/login)"/.exec(html)![1];
      body = new URLSearchParams({ user: opts.userId });
    } else if (/action="\/interaction\/[^"]*\/confirm"/.test(html)) {
      action = (opts.consent === "cancel" ? /action="([^"]*\/abort)"/ : /action="([^"]*\/confirm)"/).exec(html)![1];
      body = new URLSearchParams({ allow: "yes" });
    } else if (html.includes('type="hidden"')) {
      // oidc-provider's self-submitting form (e.g. ending the previous user's provider session).
      action = /<form method="post" action="([^"]*)"/.exec(html)![1];
      body = new URLSearchParams([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/>/g)].map((m) => [m[1], m[2]]));
    } else throw new Error(`unexpected identity provider page at ${next.pathname}`);
    const target = new URL(action.replaceAll("&amp;", "&"), next);
    visited.push(`POST ${target.href}`);
    const posted = await fetch(target, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: idpJar.header(), "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    idpJar.take(posted);
    if (posted.status !== 302 && posted.status !== 303) {
      throw new Error(`identity provider answered ${posted.status} to ${target.pathname}: ${(await posted.text()).slice(0, 300)}`);
    }
    next = new URL(posted.headers.get("location")!, target);
  }
  throw new Error("too many redirects");
}
