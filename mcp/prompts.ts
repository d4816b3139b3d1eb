/**
 * Prompts for the common journeys (MCP `prompts/list`, `prompts/get`): a client offers them to
 * the person (often as slash commands); the text they produce walks a model through the tools in
 * the right order, with the money rules said where they matter. Arguments are strings, as the
 * MCP specification has them.
 */
export interface McpPromptArgument {
  name: string;
  description: string;
  required: boolean;
}

export interface McpPrompt {
  name: string;
  title: string;
  description: string;
  arguments: McpPromptArgument[];
  /** The user message the prompt expands to, from its arguments (the required ones are present). */
  text(args: Record<string, string>): string;
}

/** A prompt argument is echoed into the text: no longer than a demand's description. */
export const promptArgumentLengthMax = 4000;

const given = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim());

export const mcpPrompts: McpPrompt[] = [
  {
    name: 'find_and_buy_capability',
    title: 'Find and buy a capability for a job',
    description: 'Find the capability on the marketplace that best fits a job, check its price against a budget, buy it and follow the delivery',
    arguments: [
      { name: 'job', description: 'What needs doing, in a sentence or two (English or Chinese)', required: true },
      { name: 'budget', description: 'The most to pay, as a decimal amount in your currency (e.g. "25.00"); left out: ask before buying', required: false },
    ],
    text: (args) => {
      const budget = given(args.budget);
      return [
        `Find and buy a capability on the Agent Marketplace for this job:`,
        '',
        args.job!.trim(),
        '',
        budget ? `Budget: at most ${budget} (in my currency). Never pay more.` : 'No budget was given: tell me the price and ask me before buying anything.',
        '',
        'Steps:',
        '1. Call get_wallet (or read marketplace://wallet) and note the available balance.',
        `2. Call create_demand with description = the job${budget ? `, max_price_ut = "${budget}"` : ''} and an idempotency_key you make up ` +
          '(leave auto_accept out: the purchase is decided below).',
        '3. Call match_capabilities with the demand id (top_k 5). If nothing fits, try search_capabilities with the key words of the job.',
        '4. Pick the best candidate by score and price; call get_capability on it and read its description, price_ut and pricing_model.',
        `5. ${budget ? 'If its price_ut is within the budget and the available balance, go on' : 'Tell me the capability and its price_ut and wait for my yes'}; otherwise stop and say why.`,
        '6. Call buy_capability with capability_id, demand_id, max_price = the price_ut you read (so a higher price is refused and nothing is charged) ' +
          'and an idempotency_key; if the call fails or times out, retry with the same key (it never buys twice).',
        '7. Follow the transaction with get_transaction (or marketplace://transactions/open) until it is delivered; check result_payload ' +
          'against the job, then call confirm_transaction to pay the seller, or tell me what is wrong instead.',
      ].join('\n');
    },
  },
  {
    name: 'publish_task',
    title: 'Publish a task',
    description:
      'Write a task from a job description and publish it on the marketplace, with a bounty held from the wallet, so that skilled people or agents apply',
    arguments: [
      { name: 'job', description: 'The work to be done, with what counts as done (English or Chinese)', required: true },
      {
        name: 'bounty',
        description: 'The bounty as a decimal amount in your currency (e.g. "50.00"); held from your wallet while the task is open',
        required: false,
      },
      { name: 'city', description: 'For work done in person: the city (the task is then offline); left out: online', required: false },
    ],
    text: (args) => {
      const bounty = given(args.bounty);
      const city = given(args.city);
      return [
        'Publish a task on the Agent Marketplace for this job:',
        '',
        args.job!.trim(),
        '',
        bounty
          ? `Bounty: ${bounty} (in my currency); it is held from my wallet while the task is open.`
          : 'No bounty was given: publish without one (applicants propose a price).',
        city ? `The work is done in person in ${city}: mode offline, city "${city}".` : 'The work is done online: mode online.',
        '',
        'Steps:',
        `1. ${bounty ? 'Call get_wallet and check that the available balance covers the bounty; if not, stop and tell me.' : 'Optionally call search_skills with the key words of the job to see who offers it and at what price.'}`,
        '2. Write a short title (at most a line) and a description that says the deliverables, the acceptance criteria and any deadline; ' +
          'choose the category that fits (read marketplace://categories for the codes).',
        `3. Call publish_task with title, description, mode${city ? ', city' : ''}, category${bounty ? `, bounty_amount = "${bounty}"` : ''}, ` +
          'delivery_hours if the job has a deadline, and an idempotency_key; if the call fails or times out, retry with the same key.',
        '4. Tell me the task id and its status. When applications arrive (list_task_applications), accept one with accept_application, passing max_price (the most I ' +
          'agree to pay) so a higher agreed price is refused; after delivery, check the result and call confirm_transaction to pay.',
      ].join('\n');
    },
  },
];
