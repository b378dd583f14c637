#!/usr/bin/env python3
"""Instructions per turn of each staged loop of a kernel's SASS: for every backward branch whose loop holds a
DEPBAR (a staged tile's wait), the count along its hot path (tools/sass_hot_path.py's rules: predicated forward
branches taken only around slow paths), with its DEPBARs, 128-bit stores and cp.async copies (one tile: 1 DEPBAR).
    nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -cubin -o k.cubin sass_k.cu
    cuobjdump -sass k.cubin > k.sass; python3 sass_loop.py k.sass"""
import collections
import os
import re
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../tools"))
from sass_hot_path import opcode
text=open(sys.argv[1]).read()
for function in re.split(r"\n\s*Function : ", text)[1:]:
    ins=[]
    for line in function.split("\n"):
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m: ins.append((int(m.group(1),16), m.group(2).strip()))
    index={a:i for i,(a,_) in enumerate(ins)}
    deps=[i for i,(_,s) in enumerate(ins) if opcode(s).startswith("DEPBAR.LE")]
    # backward branches enclosing a DEPBAR
    for i,(a,s) in enumerate(ins):
        op=opcode(s)
        if op.startswith("BRA") and not op.startswith("BRA.DIV"):
            t=index.get(int(re.search(r"0x([0-9a-f]+)",s).group(1),16))
            if t is not None and t<i and any(t<=d<=i for d in deps):
                # walk t..i with hot rules
                j=t; n=0; c=collections.Counter()
                while j<=i and n<100000:
                    tx=ins[j][1]; o=opcode(tx); n+=1; c[o.split('.')[0]]+=1
                    if o.startswith("BRA") and not o.startswith("BRA.DIV"):
                        tt=index.get(int(re.search(r"0x([0-9a-f]+)",tx).group(1),16))
                        if tt is not None and tt>j:
                            sk=[opcode(x) for _,x in ins[j+1:tt]]
                            if not tx.startswith("@") or any(q.startswith("CALL") or q=="LDG.E.128" for q in sk):
                                j=tt; continue
                    j+=1
                ndep=sum(1 for d in deps if t<=d<=i)
                print(f"loop {hex(ins[t][0])}-{hex(a)}: {n} hot instr, {ndep} DEPBAR, STG.128 {c['STG']}, LDGSTS {c['LDGSTS']}")
