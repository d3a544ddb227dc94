/**
 * A database the service must not use, already worded for the operator (someone else's file or
 * schema, a migration history it does not know): printed as one line, exit 1.
 */
export class StartupRefusal extends Error {}
