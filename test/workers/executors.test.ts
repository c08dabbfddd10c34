import { afterAll, describe, expect, it } from 'vitest';
import { BerthError } from '../../src/errors.js';
import { Executors, type ExecEvent, type Task } from '../../src/workers/executors/index.js';
import { until } from '../support/until.js';
import { processAlive } from '../support/process-groups.js';

const ex = new Executors({ graceMs: 500 });
afterAll(() => ex.close());

function source(src: string, kwargs: Record<string, unknown> = {}, env: Record<string, string> = {}): Task {
  return { callId: 'r1:flow.node', payload: { kind: 'source', source: src, kwargs }, gpuIds: [], env };
}
function command(argv: string[], gpuIds: number[] = [], env: Record<string, string> = {}): Task {
  return { callId: 'r1:flow.cmd', payload: { kind: 'command', argv, env: {}, cwd: '' }, gpuIds, env };
}
async function run(task: Task, signal = new AbortController().signal) {
  const events: ExecEvent[] = [];
  const outcome = await ex.run(task, (e) => events.push(e), signal);
  return { outcome, events };
}

describe('command executor', () => {
  it('replaces {devices} with the granted range and applies the allocation env', async () => {
    const { outcome, events } = await run(
      command(['sh', '-c', 'echo dev=$1 cvd=$CUDA_VISIBLE_DEVICES', 'sh', '{devices}'], [0, 1, 2, 3], {
        CUDA_VISIBLE_DEVICES: '0,1,2,3',
      }),
    );
    expect(outcome).toEqual({ ok: true, value: { exit_code: 0 } });
    expect(events).toEqual([{ kind: 'log', stream: 'stdout', line: 'dev=0-3 cvd=0,1,2,3' }]);
  });

  it('a non-zero exit is an ExitCode failure and stderr lines are logged', async () => {
    const { outcome, events } = await run(command(['sh', '-c', 'echo oops >&2; exit 3']));
    expect(outcome).toMatchObject({ ok: false, type: 'ExitCode' });
    expect(outcome.ok === false && outcome.message).toContain('code 3');
    expect(events).toEqual([{ kind: 'log', stream: 'stderr', line: 'oops' }]);
  });

  it('invalid UTF-8 in output is replaced, not fatal', async () => {
    const { events } = await run(command(['sh', '-c', "printf 'a\\377b\\n'"]));
    expect(events).toEqual([{ kind: 'log', stream: 'stdout', line: 'a\uFFFDb' }]);
  });

  it('a missing program is a SpawnError failure', async () => {
    const { outcome } = await run(command(['/nonexistent/berth-test-program']));
    expect(outcome).toMatchObject({ ok: false, type: 'SpawnError' });
  });

  it('a cwd that does not exist is a SpawnError naming the cwd, not the shell the watchdog starts', async () => {
    const task = command(['pwd']);
    task.payload = { kind: 'command', argv: ['pwd'], env: {}, cwd: '/nonexistent/berth-test-dir' };
    const { outcome } = await run(task);
    expect(outcome).toEqual({
      ok: false,
      type: 'SpawnError',
      message: 'cannot start "pwd": cwd /nonexistent/berth-test-dir does not exist',
      traceback: '',
    });
  });

  it('cancel stops a command and its children; a command ignoring SIGTERM is killed after the grace', async () => {
    const ac = new AbortController();
    const events: ExecEvent[] = [];
    const started = Date.now();
    const p = ex.run(command(['sh', '-c', "trap '' TERM; sleep 60 & echo $!; wait"]), (e) => events.push(e), ac.signal);
    await until(() => events.length > 0);
    ac.abort(new BerthError('cancelled', 'cancelled by test'));
    await expect(p).rejects.toMatchObject({ kind: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(10_000);
    const child = Number((events[0] as { line: string }).line);
    await until(() => !processAlive(child));
  });
});

describe('python executor', () => {
  it('calls process(**kwargs) and returns its JSON value', async () => {
    const { outcome } = await run(source('def process(x):\n    return {"out": x + 1}\n', { x: 1 }));
    expect(outcome).toEqual({ ok: true, value: { out: 2 } });
  });

  it('runs with the allocation env', async () => {
    const { outcome } = await run(
      source(
        'import os\ndef process():\n    return {"threads": int(os.environ["OMP_NUM_THREADS"])}\n',
        {},
        { OMP_NUM_THREADS: '2' },
      ),
    );
    expect(outcome).toEqual({ ok: true, value: { threads: 2 } });
  });

  it('env a node sets, changes or deletes does not leak into the next node of the same process', async () => {
    const change =
      'import os\ndef process():\n    os.environ["BERTH_TEST_LEAK"] = "1"\n    os.environ["OMP_NUM_THREADS"] = "9"\n' +
      '    del os.environ["BERTH_TEST_KEEP"]\n    return 1\n';
    const look =
      'import os\ndef process():\n    return [os.environ.get("BERTH_TEST_LEAK"), os.environ.get("OMP_NUM_THREADS"), ' +
      'os.environ.get("BERTH_TEST_KEEP")]\n';
    const env = { OMP_NUM_THREADS: '3', BERTH_TEST_KEEP: 'k' };
    expect((await run(source(change, {}, env))).outcome).toEqual({ ok: true, value: 1 });
    expect((await run(source(look, {}, env))).outcome).toEqual({ ok: true, value: [null, '3', 'k'] });
  });

  it('report() is a metric and print() a log line, in order', async () => {
    const { outcome, events } = await run(
      source('def process():\n    print("hello")\n    report("loss", 0.5)\n    return 1\n'),
    );
    expect(events).toEqual([
      { kind: 'log', stream: 'stdout', line: 'hello' },
      { kind: 'metric', name: 'loss', value: 0.5 },
    ]);
    expect(outcome).toEqual({ ok: true, value: 1 });
  });

  it('an exception is a failure with class, message and a traceback naming the source line', async () => {
    const { outcome } = await run(source('def process():\n    x = 1\n    raise ValueError("bad")\n'));
    expect(outcome).toMatchObject({ ok: false, type: 'ValueError', message: 'bad' });
    const tb = outcome.ok === false ? outcome.traceback : '';
    expect(tb).toContain('line 3');
    expect(tb).toContain('raise ValueError("bad")');
    expect(tb).not.toContain('harness.py');
  });

  it('a source run again (compiled once) still names its own call and line in a traceback', async () => {
    const src = 'def process(n):\n    x = 1\n    raise ValueError(n)\n';
    for (const callId of ['r1:flow.a', 'r2:flow.b']) {
      const task: Task = { ...source(src, { n: callId }), callId };
      const { outcome } = await run(task);
      expect(outcome).toMatchObject({ ok: false, type: 'ValueError', message: callId });
      const tb = outcome.ok === false ? outcome.traceback : '';
      expect(tb).toContain(`File "<${callId}>", line 3, in process`);
      expect(tb).toContain('raise ValueError(n)');
    }
  });

  it('a syntax error still names the call it came in, also when the same source is sent again', async () => {
    for (const callId of ['r1:flow.bad', 'r2:flow.bad']) {
      const { outcome } = await run({ ...source('def process(:\n    pass\n'), callId });
      expect(outcome).toMatchObject({ ok: false, type: 'SyntaxError' });
      expect(outcome.ok === false ? outcome.traceback : '').toContain(`File "<${callId}>", line 1`);
    }
  });

  it("a compile-time warning is shown on every call, under that call's name, with its line", async () => {
    const src = 'def process(x=1):\n    return x is 1\n';
    for (const callId of ['r1:flow.warn', 'r2:flow.warn']) {
      const { outcome, events } = await run({ ...source(src), callId });
      expect(outcome).toEqual({ ok: true, value: true });
      const lines = events.flatMap((e) => (e.kind === 'log' && e.stream === 'stderr' ? [e.line] : []));
      expect(lines[0]).toMatch(new RegExp(`^<${callId}>:2: SyntaxWarning: "is" with a literal`));
      expect(lines[1]).toBe('  return x is 1');
    }
  });

  it('a source nested deeper than the renaming follows still runs, and compiles without killing its process', async () => {
    const deep = `def process():\n    f = ${'lambda: '.repeat(600)}1\n    for _ in range(600):\n        f = f()\n    return f\n`;
    expect((await run(source(deep))).outcome).toEqual({ ok: true, value: 1 });
    expect(await ex.compile(deep, '<flow.deep>')).toBeUndefined();
    expect((await run(source(deep))).outcome).toEqual({ ok: true, value: 1 });
  });

  it("a warm interpreter does not keep each finished call's source lines (no growth per call)", async () => {
    const count = 'import linecache\ndef process():\n    return len(linecache.cache)\n';
    const sizes: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      const { outcome } = await run({ ...source(count), callId: `r${i}:flow.count` });
      sizes.push(outcome.ok ? outcome.value : outcome);
    }
    expect(new Set(sizes).size).toBe(1);
  });

  it('a value that is not JSON-able is a TypeError failure', async () => {
    const { outcome } = await run(source('def process():\n    return object()\n'));
    expect(outcome).toMatchObject({ ok: false, type: 'TypeError' });
  });

  it('same env reuses one warm process; a different env adds one pool; a cancelled process is replaced', async () => {
    const local = new Executors({ graceMs: 300 });
    try {
      const pid = 'import os\ndef process():\n    return os.getpid()\n';
      const a = await local.run(
        source(pid, {}, { OMP_NUM_THREADS: '1' }),
        () => undefined,
        new AbortController().signal,
      );
      const b = await local.run(
        source(pid, {}, { OMP_NUM_THREADS: '1' }),
        () => undefined,
        new AbortController().signal,
      );
      expect(a).toEqual(b);
      expect(local.python.pools.count).toBe(1);
      await local.run(source(pid, {}, { OMP_NUM_THREADS: '2' }), () => undefined, new AbortController().signal);
      expect(local.python.pools.count).toBe(2);
      expect(local.python.pools.started).toBe(2);
      const ac = new AbortController();
      const events: ExecEvent[] = [];
      const p = local.run(
        source(
          'import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ndef process():\n    print("up")\n' +
            '    time.sleep(60)\n',
          {},
          { OMP_NUM_THREADS: '1' },
        ),
        (e) => events.push(e),
        ac.signal,
      );
      await until(() => events.length > 0);
      ac.abort(new BerthError('cancelled', 'cancelled by test'));
      await expect(p).rejects.toMatchObject({ kind: 'cancelled' });
      const c = await local.run(
        source(pid, {}, { OMP_NUM_THREADS: '1' }),
        () => undefined,
        new AbortController().signal,
      );
      expect(c.ok).toBe(true);
      expect(local.python.pools.started).toBe(3);
    } finally {
      await local.close();
    }
  });

  it('compile reports a SyntaxError without running the source', async () => {
    expect(await ex.compile('def process():\n    return 1\nraise SystemExit\n', '<c>')).toBeUndefined();
    expect(await ex.compile('def process(:\n', '<c>')).toMatchObject({ type: 'SyntaxError' });
  });
});

/** True while `pid` runs (a zombie left for a reaper counts as gone). */
