import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpHuman } from './helpers/actors.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
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

  it('never leaks a stack trace or SQL in an error body', async () => {
    const response = await test.http.post('/api/v1/auth/signup').set('Content-Type', 'application/json').send('{"a":').expect(400);
    expect(JSON.stringify(response.body)).not.toMatch(/at .*\.ts|SELECT|INSERT|stack/i);
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
    const response = await test.http.post('/api/v1/auth/signup').send({ email: `weak-${password}@example.com`, password }).expect(400);
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
