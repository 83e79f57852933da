using Serverlab.Contract;

namespace Serverlab.AspNetCore;

/// <summary>
/// A route handler's result: the contract's <see cref="Reply"/> written as bytes with
/// the exact Content-Type and an exact Content-Length, so Kestrel never chunks it.
/// Date (and Server) are Kestrel's.
/// </summary>
internal sealed class ReplyResult(Reply reply) : IResult
{
    public Task ExecuteAsync(HttpContext httpContext)
    {
        HttpResponse response = httpContext.Response;
        response.StatusCode = reply.Status;
        // Set as a string, the header goes out verbatim: "text/plain; charset=utf-8".
        response.ContentType = Reply.ContentType;
        response.ContentLength = reply.Body.Length;
        if (HttpMethods.IsHead(httpContext.Request.Method))
        {
            return Task.CompletedTask; // GET's status and headers, Content-Length included; no body
        }
        ValueTask write = response.Body.WriteAsync(reply.Body);
        return write.IsCompletedSuccessfully ? Task.CompletedTask : write.AsTask();
    }
}
