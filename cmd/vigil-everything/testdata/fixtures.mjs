// What vigil-everything's fixtures answer, and what a client answers them,
// shared by the TypeScript SDK v1 harness
// (cmd/vigil/testdata/interop/everything-client.mjs) and the v2 one
// (clientv2/checks/core.mjs).
//
// calls are tool calls with their exact results, gets prompts with theirs,
// and rounds the tools that ask the client (sampling, elicitation, roots):
// [tool, arguments, the result, what the tool asked the client], the client
// answering with answerElicitation and answerSampling. In the 2025 era the
// tools ask by server-to-client requests; in 2026-07-28 by input_required
// results, which the SDKs fulfil through the same handlers and retries.

export const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
export const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

// JSON_SCHEMA_TOOL and STRUCTURED_TOOL are two tools as tools/list gives
// them: JSON Schema 2020-12 features, and an output schema.
export const JSON_SCHEMA_TOOL = {
  name: 'json_schema_2020_12_tool',
  description: 'Tool with JSON Schema 2020-12 features',
  inputSchema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: {
      address: {
        $anchor: 'addressDef',
        type: 'object',
        properties: { street: { type: 'string' }, city: { type: 'string' } },
      },
    },
    properties: {
      name: { type: 'string' },
      address: { $ref: '#/$defs/address' },
      contactMethod: { type: 'string', enum: ['phone', 'email'] },
      phone: { type: 'string' },
      email: { type: 'string' },
    },
    allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
    if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
    then: { required: ['phone'] },
    else: { required: ['email'] },
    additionalProperties: false,
  },
};

export const STRUCTURED_TOOL = {
  name: 'vigil_structured',
  description: 'Adds and multiplies two integers; the result is structured content (with an output schema).',
  inputSchema: {
    type: 'object',
    properties: {
      a: { type: 'integer', description: 'the first operand' },
      b: { type: 'integer', description: 'the second operand' },
    },
    required: ['a', 'b'],
    additionalProperties: false,
  },
  outputSchema: {
    type: 'object',
    properties: { sum: { type: 'integer' }, product: { type: 'integer' } },
    required: ['sum', 'product'],
    additionalProperties: false,
  },
};

// text is a tool result of one text content.
export const text = (t) => ({ content: [{ type: 'text', text: t }] });

// Tool calls with their exact results: every content type, structured
// output, a validation failure and a tool error.
export const calls = [
  ['about', {}, text('vigil-everything dev: the Vigil MCP conformance fixture server')],
  ['test_simple_text', undefined, text('This is a simple text response for testing.')],
  ['test_image_content', {}, { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }],
  ['test_audio_content', {}, { content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }],
  [
    'test_embedded_resource',
    {},
    {
      content: [
        {
          type: 'resource',
          resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
        },
      ],
    },
  ],
  [
    'test_multiple_content_types',
    {},
    {
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' },
        },
      ],
    },
  ],
  [
    'test_error_handling',
    {},
    { content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }], isError: true },
  ],
  [
    'vigil_structured',
    { a: 6, b: 7 },
    { content: [{ type: 'text', text: '{"sum":13,"product":42}' }], structuredContent: { sum: 13, product: 42 } },
  ],
  [
    'vigil_structured',
    { a: 'six', b: 7 },
    {
      content: [
        {
          type: 'text',
          text: 'invalid arguments for tool "vigil_structured": /a: type: "six" has type "string", want "integer"',
        },
      ],
      isError: true,
    },
  ],
  ['vigil_region', { region: 'eu-west' }, text('Region: eu-west')],
];

export const gets = [
  ['test_simple_prompt', undefined, [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }]],
  [
    'test_prompt_with_arguments',
    { arg1: 'one', arg2: 'two' },
    [{ role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='one', arg2='two'" } }],
  ],
  [
    'test_prompt_with_embedded_resource',
    { resourceUri: 'test://example-resource' },
    [
      {
        role: 'user',
        content: {
          type: 'resource',
          resource: { uri: 'test://example-resource', mimeType: 'text/plain', text: 'Embedded resource content for testing.' },
        },
      },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  ],
  [
    'test_prompt_with_image',
    undefined,
    [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  ],
];

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
    [{ method: 'roots/list', params: {} }],
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
