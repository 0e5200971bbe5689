// The vigil-everything tools that ask the client (sampling, elicitation,
// roots), shared by the TypeScript SDK v1 harness
// (cmd/vigil/testdata/interop/everything-client.mjs) and the v2 one
// (clientv2/checks/core.mjs): each round is [tool, arguments, the result,
// what the tool asked the client], the clients answering with the fixed
// values both harnesses give. In the 2025 era the tools ask by
// server-to-client requests; in 2026-07-28 by input_required results, which
// the SDKs fulfil through the same handlers and retries. answerElicitation
// and answerSampling are those fixed answers.

const text = (t) => ({ content: [{ type: 'text', text: t }] });

export const rounds = [
  [
    'test_sampling',
    { prompt: 'What is the capital of France?' },
    text('LLM response: Paris'),
    [
      {
        method: 'sampling/createMessage',
        params: { messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }], maxTokens: 100 },
      },
    ],
  ],
  [
    'test_elicitation',
    { message: 'Please provide your information' },
    text('User response: action=accept, content={"email":"ada@example.com","username":"ada"}'),
    [
      {
        method: 'elicitation/create',
        params: {
          message: 'Please provide your information',
          requestedSchema: {
            type: 'object',
            properties: {
              username: { type: 'string', description: "User's response" },
              email: { type: 'string', description: "User's email address" },
            },
            required: ['username', 'email'],
          },
        },
      },
    ],
  ],
  [
    'test_elicitation_sep1330_enums',
    {},
    text(
      'Elicitation completed: action=accept, content={"legacyEnum":"opt1","titledMulti":["value2"],"titledSingle":"value3","untitledMulti":["option1","option3"],"untitledSingle":"option2"}',
    ),
    [
      {
        method: 'elicitation/create',
        params: {
          message: 'Please select options from the enum fields',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
              titledSingle: {
                type: 'string',
                description: 'Select one option with titles',
                oneOf: [
                  { const: 'value1', title: 'First Option' },
                  { const: 'value2', title: 'Second Option' },
                  { const: 'value3', title: 'Third Option' },
                ],
              },
              legacyEnum: {
                type: 'string',
                description: 'Select one option (legacy)',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: {
                type: 'array',
                description: 'Select multiple options',
                minItems: 1,
                maxItems: 3,
                items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              },
              titledMulti: {
                type: 'array',
                description: 'Select multiple options with titles',
                minItems: 1,
                maxItems: 3,
                items: {
                  anyOf: [
                    { const: 'value1', title: 'First Choice' },
                    { const: 'value2', title: 'Second Choice' },
                    { const: 'value3', title: 'Third Choice' },
                  ],
                },
              },
            },
          },
        },
      },
    ],
  ],
  [
    'test_elicitation_sep1034_defaults',
    {},
    text('Elicitation completed: action=decline, content={}'),
    [
      {
        method: 'elicitation/create',
        params: {
          message: 'Please review and update the form fields with defaults',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'User name', default: 'John Doe' },
              age: { type: 'integer', description: 'User age', default: 30 },
              score: { type: 'number', description: 'User score', default: 95.5 },
              status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
              verified: { type: 'boolean', description: 'Verification status', default: true },
            },
          },
        },
      },
    ],
  ],
  [
    'vigil_roots',
    {},
    {
      content: [{ type: 'text', text: '{"roots":[{"uri":"file:///interop/root","name":"Interop Root"}]}' }],
      structuredContent: { roots: [{ uri: 'file:///interop/root', name: 'Interop Root' }] },
    },
    [{ method: 'roots/list', params: undefined }],
  ],
  [
    'test_input_required_result_multiple_inputs',
    {},
    text('Name: Ada; Greeting: Hello there!; Roots: 1'),
    [
      {
        method: 'elicitation/create',
        params: {
          message: 'What is your name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        },
      },
      {
        method: 'sampling/createMessage',
        params: { messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 },
      },
      { method: 'roots/list', params: {} },
    ],
  ],
];

// answerElicitation is the client's answer to an elicitation/create with
// params: accept, with fixed content, for the questions the fixtures ask;
// decline for any other.
export function answerElicitation(params) {
  switch (params.message) {
    case 'Please provide your information':
      return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
    case 'Please select options from the enum fields':
      return {
        action: 'accept',
        content: {
          untitledSingle: 'option2',
          titledSingle: 'value3',
          legacyEnum: 'opt1',
          untitledMulti: ['option1', 'option3'],
          titledMulti: ['value2'],
        },
      };
    case 'What is your name?':
      return { action: 'accept', content: { name: 'Ada' } };
    case 'Delete a.txt?':
      return { action: 'accept', content: { confirm: true } };
    default:
      return { action: 'decline' };
  }
}

// answerSampling is the client's answer to a sampling/createMessage with
// params.
export function answerSampling(params) {
  const prompt = params.messages[0].content.text;
  const reply = prompt === 'Generate a greeting' ? 'Hello there!' : 'Paris';
  return { role: 'assistant', content: { type: 'text', text: reply }, model: 'interop-model', stopReason: 'endTurn' };
}
