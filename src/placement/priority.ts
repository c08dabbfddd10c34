/**
 * Priorities (SPEC Q1): the queue serves higher priority first, then arrival. An ask names a number (`priority`),
 * a class of the config (`priority_class`, name → value), or neither (the default class's value, else 0). Classes
 * also say whether their claims may preempt lower ones (`preemption: lower | never`, SPEC Q2); they are replaced
 * whole on a config reload, and an ask keeps the number it was given.
 */
import { BerthError } from '../errors.js';
import type { NormalizedAsk } from './types.js';

/** One priority class of the config. */
export interface PriorityClass {
  /** Its priority, ±1,000,000,000. */
  value: number;
  /** Asks naming neither a priority nor a class take this class (at most one class is the default). */
  default?: boolean;
  /** Whether its claims may preempt strictly lower ones (SPEC Q2; `lower`, the default) or never preempt. */
  preemption?: 'lower' | 'never';
  /** The client identities (token or certificate names, SPEC R7) that may name it; absent = every caller. */
  tenants?: string[];
}

/** Priority classes by name (config `priority_classes:`). */
export type PriorityClasses = Record<string, PriorityClass>;

/** The classes an ask is resolved against; replaced whole by `set`. */
export class PriorityBook {
  #classes: PriorityClasses = {};
  #anyPreempts = false;
  #restricted = false;
  #default?: [string, PriorityClass];

  constructor(classes: PriorityClasses = {}) {
    this.set(classes);
  }

  /** Replaces every class (a config reload: all or nothing, checked by the config schema before). */
  set(classes: PriorityClasses): void {
    this.#classes = { ...classes };
    this.#default = Object.entries(classes).find(([, c]) => c.default);
    this.#anyPreempts = Object.values(classes).some((c) => (c.preemption ?? 'lower') === 'lower');
    this.#restricted = Object.values(classes).some((c) => c.tenants);
  }

  /**
   * True when resolved `ask` may preempt strictly lower claims (SPEC Q2): it has a class whose `preemption` is
   * `lower` (the default). A bare `priority` never preempts: eviction is a property of a class the operator wrote.
   */
  preempts(ask: NormalizedAsk): boolean {
    const name = ask.priorityClass;
    if (name === undefined || !Object.hasOwn(this.#classes, name)) return false;
    return (this.#classes[name].preemption ?? 'lower') === 'lower';
  }

  /** True when some class may preempt (SPEC Q2): held claims must then be ready to hear a notice. */
  get anyPreempts(): boolean {
    return this.#anyPreempts;
  }

  /** A bare `priority` of `owner` may be at most the highest value of the classes open to it (0 when none). */
  #checkBare(priority: number, at: string, owner: string | undefined): void {
    const open = openTo(this.#classes, owner);
    const most = open.length ? Math.max(...open.map((c) => c.value)) : 0;
    if (priority <= most) return;
    throw new BerthError(
      'permission_denied',
      `${at}priority: at most ${most} for ${who(owner, 'a caller without a client identity')} ` +
        `(the highest class open to it; got ${priority})`,
    );
  }

  /** The classes, by name. */
  get classes(): Readonly<PriorityClasses> {
    return this.#classes;
  }

  /**
   * `ask` with its priority resolved (see `pick`); the same object when nothing changes.
   * @throws BerthError INVALID_ARGUMENT as `pick`, under `ask.`.
   */
  resolve(ask: NormalizedAsk): NormalizedAsk {
    const bare = ask.priorityClass === undefined && (ask.priority !== undefined || !this.#default);
    if (bare && !(this.#restricted && ask.priority !== undefined)) return ask; // hot path
    const p = this.pick(ask.priority, ask.priorityClass, 'ask.', ask.owner);
    return p.priority === ask.priority && p.priorityClass === ask.priorityClass ? ask : { ...ask, ...p };
  }

  /**
   * The priority asked: `priority` itself, or the value of class `name`, or the default class's (then named as the
   * class), else none (priority 0). `at` prefixes the field names in errors (`ask.`, '' for a group).
   * When a class lists `tenants`, only those callers (`owner`) may name it, and a bare `priority` may be at most the
   * highest value of the classes open to the caller (else naming a number would skip the restriction).
   * @throws BerthError INVALID_ARGUMENT naming `<at>priority_class` for an unknown class (listing those known), or
   *   `<at>priority` when both are given and disagree; PERMISSION_DENIED naming the field for a class not open to
   *   the caller or a bare priority above what its classes allow.
   */
  pick(
    priority: number | undefined,
    name: string | undefined,
    at: string,
    owner?: string,
  ): { priority?: number; priorityClass?: string } {
    if (name === undefined) {
      if (priority !== undefined && this.#restricted) this.#checkBare(priority, at, owner);
      if (priority !== undefined || !this.#default) return { priority };
      const [dflt, cls] = this.#default;
      return { priority: cls.value, priorityClass: dflt };
    }
    const cls = Object.hasOwn(this.#classes, name) ? this.#classes[name] : undefined;
    if (!cls) {
      const known = Object.keys(this.#classes);
      throw new BerthError(
        'invalid_argument',
        `${at}priority_class: unknown class ${JSON.stringify(name)} ` +
          `(${known.length ? `known: ${known.join(', ')}` : 'the server has no priority_classes in its config'})`,
      );
    }
    if (cls.tenants && !(owner !== undefined && cls.tenants.includes(owner))) {
      throw new BerthError(
        'permission_denied',
        `${at}priority_class: class ${JSON.stringify(name)} is not open to ` +
          `${who(owner, 'a caller without a client identity (--client-tokens or a certificate)')} ` +
          `(open to: ${cls.tenants.join(', ')})`,
      );
    }
    if (priority !== undefined && priority !== cls.value) {
      throw new BerthError(
        'invalid_argument',
        `${at}priority: ${priority} disagrees with priority_class ${JSON.stringify(name)} (value ${cls.value}); ` +
          'set one of them',
      );
    }
    return { priority: cls.value, priorityClass: name };
  }
}

/** `client <owner>`, or `nobody` for a caller without an identity. */
const who = (owner: string | undefined, nobody: string) => (owner === undefined ? nobody : `client ${owner}`);

/** The classes open to `owner` (SPEC Q1): those without `tenants`, and those listing it. */
function openTo(classes: PriorityClasses, owner: string | undefined): PriorityClass[] {
  return Object.values(classes).filter((c) => !c.tenants || (owner !== undefined && c.tenants.includes(owner)));
}

/** The priority every ordering reads (absent = 0). */
export const priorityOf = (ask: NormalizedAsk): number => ask.priority ?? 0;
