import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, credit } from '../helpers/market.ts';

/**
 * A selection cannot outlive its price (issue 28, point 1; docs/tasks.md "Recommendations and
 * pushes"): the publisher lists the pushes of its task and withdraws one not yet answered; a
 * bounty cannot be lowered below a pending selection's price; accepting a selection charges no
 * more than the bounty held at that moment unless the publisher named a higher price against a
 * bounty it has not lowered since.
 */
let test: TestApp;

beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const expectBooks = async () => expect(await checkBooks(test.runtime.engine.dependencies.db)).toEqual([]);

async function market(funds: string, bounty: string) {
  const [publisher, owner, stranger] = [await createAgent(test), await createAgent(test), await createAgent(test)];
  await credit(test, publisher.userId, funds);
  const task = (
    await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({
        title: 'Translate a German contract',
        description: 'Twelve pages of legal German',
        mode: 'online',
        category: 'translation',
        bounty_amount: bounty,
      })
      .expect(201)
  ).body.data as { id: string };
  const skill = (
    await test.http
      .post('/api/v1/skills/')
      .set(owner.headers)
      .send({ name: 'Legal translation', description: 'German contracts', category: 'translation' })
      .expect(201)
  ).body.data as { id: string };
  return { publisher, owner, stranger, task, skill };
}
const select = (publisher: Actor, taskId: string, body: Record<string, unknown>) =>
  test.http.post(`/api/v1/tasks/${taskId}/select-skill`).set(publisher.headers).send(body);
const respond = (owner: Actor, pushId: string, decision: 'accept' | 'decline') =>
  test.http.post(`/api/v1/tasks/pushes/${pushId}/respond`).set(owner.headers).send({ decision });
const setBounty = (publisher: Actor, taskId: string, bounty: string | null) =>
  test.http.put(`/api/v1/tasks/${taskId}`).set(publisher.headers).send({ bounty_amount: bounty });
const taskOf = async (actor: Actor, taskId: string) => (await test.http.get(`/api/v1/tasks/${taskId}`).set(actor.headers).expect(200)).body.data;

describe('a selection cannot outlive its price', () => {
  it('the observed case: the bounty cannot drop below a pending selection; the publisher lists it, withdraws it, selects again at the new price, and pays that', async () => {
    const { publisher, owner, task, skill } = await market('100.00', '50.00');
    const selected = (await select(publisher, task.id, { skill_id: skill.id }).expect(201)).body.data;
    expect(selected).toMatchObject({ kind: 'selection', price: '50.00', status: 'pending' });
    // Lowering the bounty below the waiting selection's price is refused, naming it; nothing changed.
    const lowered = (await setBounty(publisher, task.id, '5.00').expect(409)).body;
    expect(lowered).toMatchObject({ code: 4092, data: { pending_selections: [{ push_id: selected.id, price: '50.00' }], bounty_amount: '5.00' } });
    expect(await taskOf(publisher, task.id)).toMatchObject({ bounty_amount: '50.00', bounty_held: '50.00' });
    expect(await balance(test, publisher)).toMatchObject({ available: '50.00', frozen: '50.00' });
    // The publisher sees the selections it sent.
    const listed = (await test.http.get(`/api/v1/tasks/${task.id}/pushes`).set(publisher.headers).expect(200)).body.data;
    expect(listed).toMatchObject({ total: 1, items: [{ id: selected.id, kind: 'selection', price: '50.00', status: 'pending', skill_id: skill.id }] });
    const withdrawn = (await test.http.delete(`/api/v1/tasks/${task.id}/pushes/${selected.id}`).set(publisher.headers).expect(200)).body.data;
    expect(withdrawn).toMatchObject({ id: selected.id, status: 'withdrawn', responded_at: expect.any(String) });
    // The owner's list shows it withdrawn, and its answer comes too late.
    const mine = (await test.http.get('/api/v1/tasks/pushes/mine').set(owner.headers).expect(200)).body.data.items;
    expect(mine).toMatchObject([{ id: selected.id, status: 'withdrawn' }]);
    expect((await respond(owner, selected.id, 'accept').expect(409)).body).toMatchObject({ code: 4090, data: { status: 'withdrawn', action: 'respond' } });
    expect(await balance(test, publisher)).toMatchObject({ available: '50.00', frozen: '50.00' });
    // Now the bounty may drop, and the same skill may be selected again at the new price.
    await setBounty(publisher, task.id, '5.00').expect(200);
    const again = (await select(publisher, task.id, { skill_id: skill.id }).expect(201)).body.data;
    expect(again).toMatchObject({ price: '5.00', status: 'pending' });
    expect((await select(publisher, task.id, { skill_id: skill.id, price: '6.00' }).expect(409)).body).toMatchObject({
      code: 4092,
      data: { push_id: again.id },
    });
    const answered = (await respond(owner, again.id, 'accept').expect(200)).body.data;
    expect(answered.acceptance_error).toBeNull();
    expect(answered.accepted.transaction).toMatchObject({ status: 'frozen', price_ut: '5.00' });
    expect(await balance(test, publisher)).toMatchObject({ available: '95.00', frozen: '5.00' });
    await expectBooks();
  });

  it("a bounty may rise, or drop to a pending selection's price, but not below it; removing the bounty counts as zero", async () => {
    const { publisher, task, skill } = await market('100.00', '20.00');
    const selected = (await select(publisher, task.id, { skill_id: skill.id, price: '15.00' }).expect(201)).body.data;
    await setBounty(publisher, task.id, '30.00').expect(200);
    await setBounty(publisher, task.id, '15.00').expect(200);
    expect((await setBounty(publisher, task.id, '14.99').expect(409)).body.data.pending_selections).toEqual([{ push_id: selected.id, price: '15.00' }]);
    expect((await setBounty(publisher, task.id, null).expect(409)).body.code).toBe(4092);
    // A change that leaves the bounty alone is not held up by the selection.
    await test.http.put(`/api/v1/tasks/${task.id}`).set(publisher.headers).send({ title: 'Translate a German supply contract' }).expect(200);
    expect(await taskOf(publisher, task.id)).toMatchObject({ bounty_amount: '15.00', bounty_held: '15.00' });
    await expectBooks();
  });

  it('a price named above the bounty is agreed against that bounty: it stands while the bounty does, and is capped at the bounty held once the bounty drops', async () => {
    // 20.00 in all, 10.00 held: a selection at 40.00 cannot be paid, so its application waits for the publisher.
    const kept = await market('20.00', '10.00');
    const lowered = await market('20.00', '10.00');
    for (const { publisher, owner, task, skill } of [kept, lowered]) {
      const selected = (await select(publisher, task.id, { skill_id: skill.id, price: '40.00' }).expect(201)).body.data;
      const answered = (await respond(owner, selected.id, 'accept').expect(200)).body.data;
      expect(answered).toMatchObject({ accepted: null, acceptance_error: { code: 4020 } });
    }
    // The selection is answered, so the bounty may drop now; then the application it made is capped at the bounty held.
    await setBounty(lowered.publisher, lowered.task.id, '5.00').expect(200);
    for (const { publisher } of [kept, lowered]) await credit(test, publisher.userId, '100.00');
    const applicationOf = async (side: typeof kept) =>
      (await test.http.get(`/api/v1/tasks/${side.task.id}/applications`).set(side.publisher.headers).expect(200)).body.data.items[0].id as string;
    const accept = async (side: typeof kept, body: Record<string, unknown>) =>
      test.http
        .post(`/api/v1/tasks/${side.task.id}/applications/${await applicationOf(side)}/accept`)
        .set(side.publisher.headers)
        .send(body);
    const refused = await (await accept(lowered, {})).body;
    expect(refused).toMatchObject({ code: 4093, data: { price: '40.00', max_price: '5.00', bounty_held: '5.00', currency: 'UT' } });
    expect(await taskOf(lowered.publisher, lowered.task.id)).toMatchObject({ status: 'open', bounty_held: '5.00' });
    expect(await balance(test, lowered.publisher)).toMatchObject({ available: '115.00', frozen: '5.00' });
    // Said explicitly, the higher price is paid.
    expect((await accept(lowered, { max_price: '40.00' })).body.data.transaction.price_ut).toBe('40.00');
    // The bounty never dropped: the publisher's own price stands without max_price.
    expect((await accept(kept, {})).body.data.transaction.price_ut).toBe('40.00');
    await expectBooks();
  });

  it('only the publisher lists and withdraws, only a pending push can be withdrawn, and the list filters by status', async () => {
    const { publisher, owner, stranger, task, skill } = await market('100.00', '10.00');
    const other = (
      await test.http
        .post('/api/v1/skills/')
        .set(stranger.headers)
        .send({ name: 'Legal translation', description: 'Contracts', category: 'translation' })
        .expect(201)
    ).body.data;
    const invited = (await test.http.post(`/api/v1/tasks/${task.id}/push-skill`).set(publisher.headers).send({ skill_id: other.id }).expect(201)).body.data;
    const selected = (await select(publisher, task.id, { skill_id: skill.id }).expect(201)).body.data;
    expect((await test.http.get(`/api/v1/tasks/${task.id}/pushes`).set(owner.headers).expect(403)).body.code).toBe(4030);
    expect((await test.http.delete(`/api/v1/tasks/${task.id}/pushes/${selected.id}`).set(owner.headers).expect(403)).body.code).toBe(4030);
    expect((await test.http.delete(`/api/v1/tasks/${task.id}/pushes/${selected.id}`).set(stranger.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.delete(`/api/v1/tasks/${task.id}/pushes/${invited.id}`).set(owner.headers).expect(404)).body.code).toBe(4040);
    await respond(stranger, invited.id, 'decline').expect(200);
    expect((await test.http.delete(`/api/v1/tasks/${task.id}/pushes/${invited.id}`).set(publisher.headers).expect(409)).body).toMatchObject({
      code: 4090,
      data: { status: 'declined', action: 'withdraw' },
    });
    await test.http.delete(`/api/v1/tasks/${task.id}/pushes/${selected.id}`).set(publisher.headers).expect(200);
    expect((await test.http.delete(`/api/v1/tasks/${task.id}/pushes/${selected.id}`).set(publisher.headers).expect(409)).body.data.status).toBe('withdrawn');
    const list = async (status?: string) =>
      (
        await test.http
          .get(`/api/v1/tasks/${task.id}/pushes`)
          .query(status ? { status } : {})
          .set(publisher.headers)
          .expect(200)
      ).body.data.items.map((item: { id: string }) => item.id);
    expect(await list()).toEqual([selected.id, invited.id]);
    expect(await list('withdrawn')).toEqual([selected.id]);
    expect(await list('declined')).toEqual([invited.id]);
    await expectBooks();
  });

  it(
    raceTest('an answer racing a withdrawal, or a bounty cut, never freezes a price the publisher took back'),
    async () => {
      for (let round = 0; round < 3; round++) {
        const { publisher, owner, task, skill } = await market('100.00', '50.00');
        const selected = (await select(publisher, task.id, { skill_id: skill.id }).expect(201)).body.data;
        const [answer, withdrawal] = await Promise.all([
          respond(owner, selected.id, 'accept'),
          test.http.delete(`/api/v1/tasks/${task.id}/pushes/${selected.id}`).set(publisher.headers),
        ]);
        // Exactly one of the two wins the pending push.
        expect([answer.status, withdrawal.status].filter((status) => status === 200)).toHaveLength(1);
        if (withdrawal.status === 200) expect(await taskOf(publisher, task.id)).toMatchObject({ status: 'open', bounty_held: '50.00' });
        const again = await market('100.00', '50.00');
        const pending = (await select(again.publisher, again.task.id, { skill_id: again.skill.id }).expect(201)).body.data;
        const [answered, cut] = await Promise.all([respond(again.owner, pending.id, 'accept'), setBounty(again.publisher, again.task.id, '5.00')]);
        const frozen = answered.body.data?.accepted?.transaction?.price_ut as string | undefined;
        // The cut went through only if the 50.00 was not frozen, and what was frozen is within the bounty held then.
        if (cut.status === 200) expect(frozen).toBeUndefined();
        if (frozen !== undefined) expect(frozen).toBe('50.00');
        await expectBooks();
      }
    },
    180_000,
  );
});
