using Serverlab.Contract;
using Serverlab.Hosting;

namespace Serverlab.AspNetCore;

/// <summary>
/// The web layer: a minimal API (WebApplication and route handlers) on Kestrel
/// over the shared contract library, on the host every ASP.NET Core stack shares
/// (Serverlab.Hosting). Every setting that is not ASP.NET Core's default is a
/// [[tuning]] entry in server.toml and a row of README.md's tuning table, with the
/// same reason.
/// </summary>
public static class App
{
    /// <summary>The methods of both routes.</summary>
    private static readonly string[] GetAndHead = [HttpMethods.Get, HttpMethods.Head];

    /// <summary>Builds the server for <paramref name="settings"/>; <c>Run</c> or <c>StartAsync</c> serves.</summary>
    public static WebApplication Build(ServerSettings settings, string[] args)
    {
        Routes routes = settings.Routes;

        // ASP.NET Core's stock builder with the tuning every ASP.NET Core stack shares
        // (../_shared/csharp/Serverlab.Hosting/ContractHost.cs).
        WebApplication app = ContractHost.CreateBuilder(settings, args, typeof(App).Assembly).Build();

        // Exactly / and /workday, then routing (ContractHost.UseContractPaths).
        app.UseContractPaths();

        // Tuning: MapMethods with GET and HEAD. Routing does not answer HEAD for a
        // MapGet route (it gives 405 with Allow: GET); with both mapped, any other
        // method on these paths gets routing's own 405 with Allow: GET, HEAD.
        // Handlers return a ReplyResult: the contract's bytes with an exact
        // Content-Length (a string returned from a handler would go out chunked).
        app.MapMethods(Routes.RootPath, GetAndHead,
            (HttpRequest request) => new ReplyResult(routes.Root(RawQuery(request))));
        app.MapMethods(Routes.WorkdayPath, GetAndHead,
            (HttpRequest request) => new ReplyResult(routes.Workday(RawQuery(request))));

        return app;
    }

    /// <summary>The query string as sent on the wire (Kestrel keeps it percent-encoded), without the '?'.</summary>
    private static ReadOnlySpan<char> RawQuery(HttpRequest request) =>
        request.QueryString.Value is { Length: > 0 } query ? query.AsSpan(1) : [];
}
