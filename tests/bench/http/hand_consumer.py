#!/usr/bin/python3
"""The peer of the http sink benchmark (run_peer_bench.sh): the consumer people write by
hand to drain a topic into an HTTP API, at least once. confluent-kafka (librdkafka) and
aiohttp, both from Debian: poll a batch, POST each record with at most --in-flight
requests outstanding (one aiohttp session, kept-alive connections), each with its
messageId as Idempotency-Key, wait for the whole batch, commit its offsets, repeat.

  hand_consumer.py --bootstrap H:P --topic T --group G --url http://127.0.0.1:P/r
                   --in-flight 64 --count N [--batch 1024]
Exits after N records were answered 2xx (retrying others up to 5 times).
"""
import argparse
import asyncio
import json

import aiohttp
from confluent_kafka import Consumer


async def send(session, sem, url, msg):
    value = msg.value()
    body = json.loads(value)
    headers = {"Content-Type": "application/json", "Idempotency-Key": body["messageId"]}
    async with sem:
        for _ in range(6):
            try:
                async with session.post(f"{url}/{body['seq']}", data=value, headers=headers) as r:
                    await r.read()
                    if 200 <= r.status < 300:
                        return True
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    return False


async def main():
    ap = argparse.ArgumentParser()
    for k in ("bootstrap", "topic", "group", "url"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--in-flight", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--batch", type=int, default=1024)
    a = ap.parse_args()
    consumer = Consumer({"bootstrap.servers": a.bootstrap, "group.id": a.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([a.topic])
    sem = asyncio.Semaphore(a.in_flight)
    done = 0
    connector = aiohttp.TCPConnector(limit=a.in_flight)
    async with aiohttp.ClientSession(connector=connector) as session:
        while done < a.count:
            msgs = [m for m in consumer.consume(a.batch, 1.0) if m.error() is None]
            if not msgs:
                continue
            ok = await asyncio.gather(*(send(session, sem, a.url, m) for m in msgs))
            done += sum(ok)
            consumer.commit(asynchronous=False)
    consumer.close()


if __name__ == "__main__":
    asyncio.run(main())
