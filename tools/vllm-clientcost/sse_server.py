"""An SSE completions endpoint shaped like vLLM's OpenAI server (FastAPI,
StreamingResponse, a pydantic chunk object serialised per token, a usage
chunk and [DONE]) for apicost.py; /cpu reports the process's CPU time."""
import asyncio
import time
from typing import List, Optional
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse, JSONResponse
from pydantic import BaseModel

class Choice(BaseModel):
    index: int
    text: str
    logprobs: Optional[dict] = None
    finish_reason: Optional[str] = None
    stop_reason: Optional[str] = None

class Chunk(BaseModel):
    id: str
    object: str = "text_completion"
    created: int
    model: str
    choices: List[Choice]
    usage: Optional[dict] = None

app = FastAPI()

@app.get("/cpu")
async def cpu():
    return JSONResponse({"cpu": time.process_time()})

@app.post("/v1/completions")
async def completions(req: Request):
    body = await req.json()
    n = body["max_tokens"]
    async def gen():
        created = int(time.time())
        for i in range(n):
            await asyncio.sleep(0)
            c = Chunk(id="cmpl-1", created=created, model=body["model"],
                      choices=[Choice(index=0, text=" tok")])
            yield "data: " + c.json(exclude_unset=True) + "\n\n"
        c = Chunk(id="cmpl-1", created=created, model=body["model"], choices=[],
                  usage={"prompt_tokens": 8, "completion_tokens": n, "total_tokens": n + 8})
        yield "data: " + c.json(exclude_unset=True) + "\n\n"
        yield "data: [DONE]\n\n"
    return StreamingResponse(gen(), media_type="text/event-stream")
