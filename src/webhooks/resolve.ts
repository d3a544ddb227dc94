import { within } from "../core/timers";
import { isIP, isPublicAddress } from "./address";
import { reasonOf, TimedOut } from "./failure";

export interface Target {
  address: string;
  family: 4 | 6;
}
export type Resolver = (hostname: string) => Promise<Target[]>;

const RESOLVE_TIMEOUT_MS = 5_000;

/** getaddrinfo cannot be cancelled: a hung lookup is only stopped waiting for. */
export const systemResolver: Resolver = async (hostname) => {
  // Loaded on first use, as node:net is (address.ts).
  const { lookup } = await import("node:dns/promises");
  const lookingUp = lookup(hostname, { all: true, verbatim: true });
  const found = await within(lookingUp, RESOLVE_TIMEOUT_MS, () => new TimedOut(RESOLVE_TIMEOUT_MS));
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

/** A receiver address the webhook rules refuse; the message suits an API 400 and an attempt log. */
export class AddressRefused extends Error {
  override name = "AddressRefused";
}

const PRIVATE_RULE = "private ones are allowed only when the service runs with WEBHOOK_ALLOW_PRIVATE=true";

/**
 * Every address a name resolves to must be public, not just the one connected to: one can be steered. The
 * messages name the host as "its host": an API 400 never echoes what was sent.
 */
export async function checkedAddress(url: URL, opts: { allowPrivate: boolean; resolve?: Resolver }): Promise<Target> {
  const host = bare(url.hostname);
  const literal = isIP(host);
  if (literal !== 0) {
    if (!opts.allowPrivate && !isPublicAddress(host))
      throw new AddressRefused(`url: its host is not a public address (${PRIVATE_RULE})`);
    return { address: host, family: literal === 6 ? 6 : 4 };
  }
  const found = await (opts.resolve ?? systemResolver)(host).catch((error) => {
    throw new AddressRefused(`url: its host does not resolve (${reasonOf(error)})`);
  });
  const [first] = found;
  if (first === undefined) throw new AddressRefused("url: its host does not resolve (no addresses)");
  const refused = opts.allowPrivate ? undefined : found.find(({ address }) => !isPublicAddress(address));
  if (refused)
    throw new AddressRefused(
      `url: its host resolves to ${refused.address}, which is not a public address (${PRIVATE_RULE})`,
    );
  return first;
}

/** URL.hostname keeps an IPv6 literal's brackets; sockets and address rules want it without. */
export const bare = (hostname: string) => (hostname.startsWith("[") ? hostname.slice(1, -1) : hostname);
