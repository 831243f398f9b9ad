// The server's OpenAI endpoints: the model list and streamed chat completions.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(apiKey) {
  const h = { 'Content-Type': 'application/json' };
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

// An OpenAI error body ({"error": {"message", "param"}}) in words.
async function errorFrom(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body?.error?.message) {
      message = `${response.status}: ${body.error.message}`;
      if (body.error.param) message += ` (field: ${body.error.param})`;
    }
  } catch { /* not JSON: the status line says enough */ }
  return new ApiError(response.status, message);
}

export async function listModels(apiKey) {
  const response = await fetch('/v1/models', { headers: headers(apiKey) });
  if (!response.ok) throw await errorFrom(response);
  const body = await response.json();
  return (body.data || []).map((m) => m.id);
}

// Streams a chat completion. onDelta(text) gets each piece of content; the result holds the
// finish reason and the usage. Throws ApiError for an error answer or an error event, and
// an Error when the connection ends before the reply does.
export async function streamChat(body, apiKey, signal, onDelta) {
  const response = await fetch('/v1/chat/completions', {
    method: 'POST', headers: headers(apiKey), body: JSON.stringify(body), signal,
  });
  if (!response.ok) throw await errorFrom(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const result = { finishReason: null, usage: null, done: false };
  let buffer = '';
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      if (signal.aborted) throw e;
      throw new Error(`The connection to the server was lost (${e.message}).`);
    }
    if (chunk.done) break;
    buffer += decoder.decode(chunk.value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;  // ": waiting" keep-alive comments
        const data = line.slice(5).trim();
        if (data === '[DONE]') {
          result.done = true;
          continue;
        }
        handleEvent(JSON.parse(data), result, onDelta);
      }
    }
  }
  if (!result.done) throw new Error('The server closed the connection before the reply finished.');
  return result;
}

function handleEvent(event, result, onDelta) {
  if (event.error) {
    const e = event.error;
    throw new ApiError(e.code || 500, e.message + (e.param ? ` (field: ${e.param})` : ''));
  }
  if (event.usage) result.usage = event.usage;
  for (const choice of event.choices || []) {
    if (choice.delta?.content) onDelta(choice.delta.content);
    if (choice.finish_reason) result.finishReason = choice.finish_reason;
  }
}
