import { describe, expect, test } from "bun:test";
import { createDeadline, withDeadline } from "../../src/db/postgres/deadline";
import { StoreUnavailable, storeFailureKind } from "../../src/db/store-errors";

/** A call that settles only when told to. */
function held<T>() {
  let settle!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    settle = resolve;
  });
  return { promise, settle };
}

describe("the PostgreSQL stores' client-side deadline", () => {
  test("a call past the deadline is a `timeout` store failure; one in time keeps its answer", async () => {
    const deadline = createDeadline(20, 2);
    expect(await deadline.within(async () => 42)).toBe(42);
    const late = deadline.within(() => held<number>().promise);
    const error = await late.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailable);
    expect(storeFailureKind(error)).toBe("timeout");
    expect(deadline.overdue()).toBe(1);
  });

  test("each call expires at its own deadline, whichever settle in between; one settled in time never expires", async () => {
    const deadline = createDeadline(60, 10);
    const expired: string[] = [];
    const started = performance.now();
    const at: Record<string, number> = {};
    const watch = (name: string, call: Promise<unknown>) =>
      call.catch(() => {
        expired.push(name);
        at[name] = performance.now() - started;
      });
    const first = watch(
      "first",
      deadline.within(() => held<number>().promise),
    );
    const quick = held<number>();
    const inTime = deadline.within(() => quick.promise);
    await Bun.sleep(30);
    const second = watch(
      "second",
      deadline.within(() => held<number>().promise),
    );
    quick.settle(7);
    expect(await inTime).toBe(7);
    await Promise.all([first, second]);
    // Each at its own deadline: the second, started 30 ms later, not with the first.
    expect(expired).toEqual(["first", "second"]);
    expect(at.first as number).toBeGreaterThanOrEqual(59);
    expect(at.second as number).toBeGreaterThanOrEqual(89);
    expect(deadline.overdue()).toBe(2);
  });

  test("with as many calls overdue as the pool has connections, new calls fail at once without running; they flow again when one settles", async () => {
    const deadline = createDeadline(20, 2);
    const stuck = [held<number>(), held<number>()];
    for (const call of stuck) await deadline.within(() => call.promise).catch(() => {});
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
    await Promise.resolve();
    expect(deadline.overdue()).toBe(1);
    expect(await deadline.within(async () => 7)).toBe(7);
  });

  test("past maxInFlight calls waiting at once, a new call is refused with `capacity` without running", async () => {
    const deadline = createDeadline(10_000, 10, 2);
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
    const guarded = withDeadline(store, createDeadline(1_000, 10));
    expect(guarded.listChunkSize).toBe(512);
    expect(await guarded.echo(5)).toBe(5);
    expect(await guarded.fails().catch((e: Error) => e.message)).toBe("from the driver");
  });
});
