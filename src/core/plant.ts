/** A plant as its owner sees it: no id unless asked, no tag when it has none. */
export interface Plant {
  name: string;
  tag?: string;
}

/** Its id is a signed 64-bit integer, a bigint past 2^53. */
export interface NewPlant extends Plant {
  id: bigint | number;
}

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;
