// Stands in for npm capnweb's types when tsconfig.types.json checks web/a2awebcap.d.ts on its
// own, strictly (capnweb 0.12's own declarations do not pass TypeScript 5.9's checks, so the
// client's build skips library checks: see tsconfig.json).
export interface RpcTarget {
  readonly __rpcTargetBrand?: never;
}

// A stub of a remote T, as far as the declarations need one.
export type RpcStub<T> = T & Disposable & { dup(): RpcStub<T> };
