%% savina_pingpong: Savina's ping-pong. Ping sends {ping, self()} to Pong, Pong answers the
%% pid the request carries with `pong`; after N round trips Ping reports its count to the
%% driver. Check: N pongs.
-module(peer_savina_pingpong).
-export([run/1]).

pong() ->
    receive
        {ping, From} -> From ! pong, pong();
        stop -> ok
    end.

%% Waits for `go`, then plays N round trips.
ping(Pong, N, Driver) ->
    receive go -> ok end,
    Pong ! {ping, self()},
    ping_loop(Pong, N, 0, Driver).

ping_loop(Pong, N, Got, Driver) ->
    receive
        pong when Got + 1 =:= N -> Driver ! {pongs, Got + 1};
        pong -> Pong ! {ping, self()}, ping_loop(Pong, N, Got + 1, Driver)
    end.

run(#{pings := N}) ->
    Self = self(),
    Pong = spawn(fun pong/0),
    Ping = spawn(fun() -> ping(Pong, N, Self) end),
    T0 = peer_savina:now_ns(),
    Ping ! go,
    Got = receive {pongs, G} -> G end,
    Secs = peer_savina:secs_since(T0),
    Pong ! stop,
    Got =:= N orelse peer_savina:fail("savina_pingpong: ~p pongs, expected ~p", [Got, N]),
    {Secs, []}.
