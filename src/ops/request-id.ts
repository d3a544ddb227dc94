import { TOKEN_PREFIX } from "../core/tokens";

/** What a request learns on its way through the app that its log line reports. */
export interface RequestNote {
  readonly id: string;
  userId: number | undefined;
  /** Asked only when needed: looking the socket's address up costs every request a little. */
  readonly peer: () => string | undefined;
  /** The client's address, once a failed authentication has been counted for it. */
  client?: string;
  /** Closes the connection soon, even one whose client has stopped reading (a stream that fell behind). */
  readonly cutOff?: () => void;
}

export type RequestNotes = WeakMap<Request, RequestNote>;

// Long enough for a UUID, a trace id or a prefixed id; nothing a log line could be hurt by, nor a token sent by mistake.
const SANE_REQUEST_ID = new RegExp(`^(?!${TOKEN_PREFIX})[A-Za-z0-9._:/+=@-]{1,128}$`);

/** The caller's X-Request-Id when it is sane, so logs join up across services; else a new one. */
export function requestIdFor(header: string | null): string {
  return header !== null && SANE_REQUEST_ID.test(header) ? header : crypto.randomUUID();
}
