import { describe, expect, test } from "bun:test";
import { StoreUnavailable, storeFailureKind } from "../../src/core/failures";
import { createDeadline, withDeadline } from "../../src/db/postgres/deadline";
import { manualTimers, settle } from "../support/clock";

/** A call that settles only when told to. */
function held<T>() {
  let settle!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    settle = resolve;
  });
  return { promise, settle };
}

/*
 * The deadline runs on a clock of the test's own (support/clock.ts): "20 ms pass" is said, not
 * slept, so each expiry is checked at its exact time and a busy machine changes nothing.
 */
describe("the PostgreSQL stores' client-side deadline", () => {
  test("a call past the deadline is a `timeout` store failure; one in time keeps its answer", async () => {
    const timers = manualTimers();
    const deadline = createDeadline(20, 2, Number.POSITIVE_INFINITY, timers);
    expect(await deadline.within(async () => 42)).toBe(42);
    let outcome: unknown = "waiting";
    const late = deadline
      .within(() => held<number>().promise)
      .catch((e: unknown) => {
        outcome = e;
      });
    await timers.advance(19);
    expect(outcome).toBe("waiting");
    await timers.advance(1);
    await late;
    expect(outcome).toBeInstanceOf(StoreUnavailable);
    expect(storeFailureKind(outcome)).toBe("timeout");
    expect(deadline.overdue()).toBe(1);
  });

  test("each call expires at its own deadline, whichever settle in between; one settled in time never expires", async () => {
    const timers = manualTimers();
    const deadline = createDeadline(60, 10, Number.POSITIVE_INFINITY, timers);
    const expired: string[] = [];
    const at: Record<string, number> = {};
    const watch = (name: string, call: Promise<unknown>) =>
      call.catch(() => {
        expired.push(name);
        at[name] = timers.now();
      });
    const first = watch(
      "first",
      deadline.within(() => held<number>().promise),
    );
    const quick = held<number>();
    const inTime = deadline.within(() => quick.promise);
    await timers.advance(30);
    const second = watch(
      "second",
      deadline.within(() => held<number>().promise),
    );
    quick.settle(7);
    expect(await inTime).toBe(7);
    await timers.advance(29);
    expect(expired).toEqual([]);
    await timers.advance(1);
    await first;
    expect(expired).toEqual(["first"]);
    await timers.advance(29);
    expect(expired).toEqual(["first"]);
    await timers.advance(1);
    await second;
    // Each at its own deadline: the second, started 30 ms later, not with the first.
    expect(expired).toEqual(["first", "second"]);
    expect(at).toEqual({ first: 60, second: 90 });
    expect(deadline.overdue()).toBe(2);
  });

  test("with as many calls overdue as the pool has connections, new calls fail at once without running; they flow again when one settles", async () => {
    const timers = manualTimers();
    const deadline = createDeadline(20, 2, Number.POSITIVE_INFINITY, timers);
    const stuck = [held<number>(), held<number>()];
    const late = stuck.map((call) => deadline.within(() => call.promise).catch(() => {}));
    await timers.advance(20);
    await Promise.all(late);
    expect(deadline.overdue()).toBe(2);
    let ran = false;
    const refused = await deadline
      .within(async () => {
        ran = true;
        return 1;
      })
      .catch((e: unknown) => e);
    expect(storeFailureKind(refused)).toBe("timeout");
    expect(ran).toBe(false);
    (stuck[0] as ReturnType<typeof held<number>>).settle(0);
    await (stuck[0] as ReturnType<typeof held<number>>).promise;
    await settle();
    expect(deadline.overdue()).toBe(1);
    expect(await deadline.within(async () => 7)).toBe(7);
  });

  test("past maxInFlight calls waiting at once, a new call is refused with `capacity` without running", async () => {
    const deadline = createDeadline(10_000, 10, 2, manualTimers());
    const waiting = [held<number>(), held<number>()];
    const calls = waiting.map((call) => deadline.within(() => call.promise));
    let ran = false;
    const refused = await deadline
      .within(async () => {
        ran = true;
        return 1;
      })
      .catch((e: unknown) => e);
    expect(storeFailureKind(refused)).toBe("capacity");
    expect(ran).toBe(false);
    for (const call of waiting) call.settle(3);
    expect(await Promise.all(calls)).toEqual([3, 3]);
    expect(await deadline.within(async () => 4)).toBe(4);
  });

  test("withDeadline keeps a store's other members and its methods' errors", async () => {
    const store = {
      listChunkSize: 512,
      async fails(): Promise<number> {
        throw new Error("from the driver");
      },
      async echo(value: number) {
        return value;
      },
    };
    const guarded = withDeadline(store, createDeadline(1_000, 10, Number.POSITIVE_INFINITY, manualTimers()));
    expect(guarded.listChunkSize).toBe(512);
    expect(await guarded.echo(5)).toBe(5);
    expect(await guarded.fails().catch((e: Error) => e.message)).toBe("from the driver");
  });
});
