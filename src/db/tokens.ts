// What both engines' token stores share.
import { type AuthenticatedUser, type Clock, LAST_USED_GRANULARITY_MS } from "../core/tokens";

/** An active token as an engine finds it by its hash, its times in ms. */
type FoundToken = Omit<AuthenticatedUser, "id" | "expired"> & { userId: number; lastUsedAt: number | null };

/** Its user; its use recorded beside the request (a read must not fail on a full disk or a held lock), at most
 * once a LAST_USED_GRANULARITY_MS and one write per token at a time. */
export function tokenUsers(touch: (tokenId: number, now: number) => Promise<unknown>, clock: Clock) {
  const recording = new Set<number>();
  return ({ tokenId, userId, scopes, expiresAt, lastUsedAt }: FoundToken): AuthenticatedUser => {
    const now = clock();
    const expired = expiresAt !== null && now >= expiresAt;
    const due = lastUsedAt === null || now - lastUsedAt >= LAST_USED_GRANULARITY_MS;
    if (!expired && due && !recording.has(tokenId)) {
      recording.add(tokenId);
      touch(tokenId, now)
        .catch(() => {})
        .finally(() => recording.delete(tokenId));
    }
    return { id: userId, tokenId, scopes, expiresAt, expired };
  };
}
