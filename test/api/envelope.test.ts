import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket } from '../helpers/market.ts';

let test: TestApp;
const logLines: string[] = [];
beforeAll(async () => {
  test = await startTestApp({}, { logLines });
});
afterAll(() => test.close());

const expectEnvelope = (body: Record<string, unknown>, code: number) => {
  expect(body).toEqual({ code, message: expect.any(String), data: expect.anything(), timestamp: expect.any(Number) });
  expect(Math.abs((body.timestamp as number) - Date.now() / 1000)).toBeLessThan(60);
};

describe('the response envelope', () => {
  it('wraps a success as code 0 with data and a Unix-seconds timestamp', async () => {
    const response = await test.http.get('/api/v1/categories').expect(200);
    expectEnvelope(response.body, 0);
    expect(response.body.message).toBe('success');
  });

  it('answers an unknown route with 4040 and HTTP 404', async () => {
    const response = await test.http.get('/api/v1/no-such-thing').expect(404);
    expectEnvelope(response.body, 4040);
    expect(response.body.message).toBe('not_found');
  });

  it('answers invalid JSON with 4001 and HTTP 400', async () => {
    const response = await test.http.post('/api/v1/auth/signup').set('Content-Type', 'application/json').send('{"email": ').expect(400);
    expectEnvelope(response.body, 4001);
  });

  it('answers a JSON array where an object is required with 4001', async () => {
    const response = await test.http.post('/api/v1/auth/signup').send([1, 2]).expect(400);
    expect(response.body.code).toBe(4001);
  });

  it('answers a missing body where one is required with 4001', async () => {
    const response = await test.http.post('/api/v1/auth/login').expect(400);
    expect(response.body.code).toBe(4001);
  });

  it('answers a 2 MiB body with 4130 and HTTP 413', async () => {
    const big = JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(2 * 1024 * 1024) });
    const response = await test.http.post('/api/v1/auth/signup').set('Content-Type', 'application/json').send(big).expect(413);
    expectEnvelope(response.body, 4130);
  });

  it('answers a schema failure with 4000, HTTP 400 and the failing paths', async () => {
    const response = await test.http.post('/api/v1/auth/signup').send({ email: 'not-an-email', password: 'short' }).expect(400);
    expectEnvelope(response.body, 4000);
    const paths = response.body.data.errors.map((error: { path: string }) => error.path);
    expect(paths).toEqual(expect.arrayContaining(['body.email', 'body.password']));
  });
});

describe('a database failure', () => {
  // A real failure in the test app's own database: a constraint added here refuses a value the
  // service itself accepts, so the statement fails inside PostgreSQL as any unforeseen error would.
  const sqlOrStack = /insert into|select |update |values|\$1|at .*\.ts|stack/i;

  it('answers 5000 without SQL or parameters, and logs only the SQLSTATE and the constraint', async () => {
    await test.runtime.database.db.raw(`ALTER TABLE users ADD CONSTRAINT test_refuses_doomed CHECK (email NOT LIKE 'doomed-%')`);
    logLines.length = 0;
    const email = 'doomed-7f3a9c@example.com';
    const response = await test.http.post('/api/v1/auth/signup').send({ email, password: 'secret-pass-4711' }).expect(500);
    expect(response.body).toEqual({ code: 5000, message: 'internal_error', data: null, timestamp: expect.any(Number) });
    const body = JSON.stringify(response.body);
    expect(body).not.toMatch(sqlOrStack);
    expect(body).not.toContain('doomed');
    const log = logLines.join('\n');
    expect(log).not.toMatch(sqlOrStack);
    expect(log).not.toContain('doomed-7f3a9c');
    expect(log).not.toContain('secret-pass-4711');
    const line = logLines.map((text) => JSON.parse(text)).find((entry) => entry.level === 'error');
    expect(line.error).toMatchObject({ sqlstate: '23514', constraint: 'test_refuses_doomed', table: 'users' });
  });

  it('names the prepared statement that failed, never its text or bindings', async () => {
    const { buyer, capability } = await agentMarket(test);
    await test.runtime.database.db.raw(`ALTER TABLE transactions ADD CONSTRAINT test_refuses_note CHECK (note IS NULL OR note NOT LIKE 'doomed%')`);
    logLines.length = 0;
    const response = await test.http
      .post('/api/v1/transactions')
      .set(buyer.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ capability_id: capability.id, note: 'doomed note 91b2' })
      .expect(500);
    expect(response.body).toEqual({ code: 5000, message: 'internal_error', data: null, timestamp: expect.any(Number) });
    expect(JSON.stringify(response.body)).not.toMatch(/doomed|insert into/i);
    const log = logLines.join('\n');
    expect(log).not.toMatch(sqlOrStack);
    expect(log).not.toContain('91b2');
    expect(log).not.toContain(capability.id);
    const line = logLines.map((text) => JSON.parse(text)).find((entry) => entry.level === 'error');
    expect(line.error).toMatchObject({ sqlstate: '23514', constraint: 'test_refuses_note', statement: expect.stringMatching(/^stmt_[0-9a-f]+_\d+$/) });
  });
});

describe('human accounts', () => {
  it('signs up with 201 and logs in with the same password', async () => {
    const human = await signUpHuman(test, 'Mixed.Case@Example.com');
    const login = await test.http.post('/api/v1/auth/login').send({ email: 'mixed.case@example.com', password: human.password }).expect(200);
    expect(login.body.data).toMatchObject({ user_id: human.userId, token_type: 'Bearer', expires_in: 86400 });
  });

  it('refuses a duplicate email with 4092', async () => {
    const human = await signUpHuman(test);
    const response = await test.http.post('/api/v1/auth/signup').send({ email: human.email.toUpperCase(), password: 'another-pass-1' }).expect(409);
    expect(response.body.code).toBe(4092);
  });

  it.each([['lettersonly'], ['12345678901'], ['a1']])('refuses the weak password %s with 4000', async (password) => {
    const response = await test.http
      .post('/api/v1/auth/signup')
      .send({ email: `weak-${password}@example.com`, password })
      .expect(400);
    expect(response.body.code).toBe(4000);
  });

  it('answers a wrong password and an unknown email with the same 4010', async () => {
    const human = await signUpHuman(test);
    const wrongPassword = await test.http.post('/api/v1/auth/login').send({ email: human.email, password: 'wrong-pass-1' }).expect(401);
    const unknownEmail = await test.http.post('/api/v1/auth/login').send({ email: 'nobody@example.com', password: 'wrong-pass-1' }).expect(401);
    expect(wrongPassword.body.code).toBe(4010);
    expect({ ...unknownEmail.body, timestamp: 0 }).toEqual({ ...wrongPassword.body, timestamp: 0 });
  });
});
